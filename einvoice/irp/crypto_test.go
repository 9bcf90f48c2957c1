package irp_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/invoiced/invoiced/einvoice/irp"
)

// TestECBKnownAnswer pins AES-256-ECB to NIST SP 800-38A, F.1.5
// (ECB-AES256.Encrypt): the client and the sandbox share EncryptECB, so
// only a known answer catches a mistake both would make.
func TestECBKnownAnswer(t *testing.T) {
	t.Parallel()
	h := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key := h("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
	plain := h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
	want := h("f3eed1bdb5d2a03c064b5a7e3db181f8591ccb10d410ed26dc5ba74a31362870b6ed21b99ca6f4f9f153e7b1beafed1d23304b7a39f9f3ff067d8d8f9e24ecc7")
	ct, err := irp.EncryptECB(key, plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(ct) != len(plain)+16 || !bytes.Equal(ct[:len(want)], want) {
		t.Fatalf("EncryptECB = %x; want %x and a padding block", ct, want)
	}
	// A whole block of plaintext gets a whole block of padding (0x10 × 16),
	// which encrypts as the same block whatever precedes it.
	pad, _ := irp.EncryptECB(key, nil)
	if !bytes.Equal(ct[len(want):], pad) {
		t.Errorf("padding block %x; want %x", ct[len(want):], pad)
	}
	got, err := irp.DecryptECB(key, ct)
	if err != nil || !bytes.Equal(got, plain) {
		t.Errorf("DecryptECB = %x, %v", got, err)
	}
}

func TestECBRoundTripAndPadding(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	for n := 0; n <= 33; n++ {
		plain := bytes.Repeat([]byte{'a'}, n)
		ct, err := irp.EncryptECB(key, plain)
		if err != nil || len(ct)%16 != 0 || len(ct) <= n {
			t.Fatalf("EncryptECB(%d bytes) = %d bytes, %v", n, len(ct), err)
		}
		if got, err := irp.DecryptECB(key, ct); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("DecryptECB of %d bytes = %q, %v", n, got, err)
		}
	}
	ct, _ := irp.EncryptECB(key, []byte("session key"))
	if _, err := irp.DecryptECB(bytes.Repeat([]byte{8}, 32), ct); err == nil {
		t.Error("DecryptECB with another key succeeded")
	}
	for _, bad := range [][]byte{nil, make([]byte, 15), make([]byte, 17)} {
		if _, err := irp.DecryptECB(key, bad); err == nil {
			t.Errorf("DecryptECB(%d bytes) succeeded", len(bad))
		}
	}
	if _, err := irp.EncryptECB(key[:16], nil); err == nil {
		t.Error("EncryptECB with a 16-byte key succeeded")
	}
}

func TestParsePublicKeyRefuses(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"", "not pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"} {
		if _, err := irp.ParsePublicKey([]byte(b)); err == nil {
			t.Errorf("ParsePublicKey(%q) succeeded", b)
		}
	}
}
