package irp_test

import (
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
)

// TestWireShapes reads answers shaped as the IRP's documentation shows them
// and writes requests whose JSON is compared with the documentation's
// field names: the client and the sandbox share these types, so only the
// documentation can catch a name both spell wrong.
func TestWireShapes(t *testing.T) {
	t.Parallel()
	// Authentication's answer (einv-apisandbox.nic.in, version1.04,
	// authentication): Data is an object, not encrypted.
	var auth irp.Answer
	must(t, json.Unmarshal([]byte(`{"Status":1,"Data":{"ClientId":"AAACI21TXXXXXX","UserName":"testuser","AuthToken":"5GGo3hKqPSvbHwRImTjIxeMKQ","Sek":"EmLpFzYohZLstcXCSX9C9XIHVLb+QcsjMO1mk+qAjW8hyXmEBQnCAYsmbluFFu+Z","TokenExpiry":"2019-11-30 14:18:00"},"ErrorDetails":null,"InfoDtls":null}`), &auth))
	var ad irp.AuthData
	must(t, json.Unmarshal(auth.Data, &ad))
	if auth.Status != 1 || ad.AuthToken != "5GGo3hKqPSvbHwRImTjIxeMKQ" || ad.TokenExpiry != "2019-11-30 14:18:00" || ad.Sek == "" {
		t.Errorf("auth answer read as %+v, %+v", auth, ad)
	}
	if at, err := irp.ParseTime(ad.TokenExpiry); err != nil || at.UTC().Format("15:04") != "08:48" {
		t.Errorf("TokenExpiry read as %v, %v; want 08:48 UTC (IST)", at, err)
	}
	// A duplicate (2150) with the registration the IRP keeps.
	var dup irp.Answer
	must(t, json.Unmarshal([]byte(`{"Status":0,"ErrorDetails":[{"ErrorCode":"2150","ErrorMessage":"Duplicate IRN"}],"Data":null,"InfoDtls":[{"InfCd":"DUPIRN","Desc":{"AckNo":112010000000001,"AckDt":"2020-06-06 11:19:00","Irn":"a5c12dca80e743321740b001fd70953e8738d109865d28ba4013750f2046f229"}}]}`), &dup))
	var dd irp.DupDesc
	must(t, json.Unmarshal(dup.InfoDtls[0].Desc, &dd))
	if dup.Status != 0 || einvoice.KindOfDetails(dup.ErrorDetails) != einvoice.KindDuplicate || dup.InfoDtls[0].InfCd != irp.InfoDuplicate ||
		dd.AckNo != "112010000000001" || dd.Irn == "" {
		t.Errorf("duplicate answer read as %+v, %+v", dup, dd)
	}
	// The first documentation version sent ErrorDetails base64-encoded; a
	// relay may write Status as a string.
	var b64 irp.Answer
	must(t, json.Unmarshal([]byte(`{"Status":"0","ErrorDetails":"W3siRXJyb3JDb2RlIjoiMjI3MCIsIkVycm9yTWVzc2FnZSI6IlRoZSBhbGxvd2VkIGNhbmNlbGxhdGlvbiB0aW1lIGxpbWl0IGlzIGNyb3NzZWQifV0="}`), &b64))
	if len(b64.ErrorDetails) != 1 || b64.ErrorDetails[0].Code != "2270" {
		t.Errorf("base64 ErrorDetails read as %+v", b64.ErrorDetails)
	}
	// Generate IRN's answer, decrypted.
	var gen irp.IRNData
	must(t, json.Unmarshal([]byte(`{"AckNo":112010000000001,"AckDt":"2020-06-06 11:19:00","Irn":"a5c1","SignedInvoice":"x.y.z","SignedQRCode":"x.y.z","Status":"ACT","EwbNo":null,"EwbDt":null,"EwbValidTill":null,"Remarks":null}`), &gen))
	if gen.AckNo != "112010000000001" || gen.Status != "ACT" || gen.SignedQRCode == "" {
		t.Errorf("generate answer read as %+v", gen)
	}
	// Requests, as the documentation names their fields.
	for _, c := range []struct {
		v    any
		want string
	}{
		{irp.AuthPayload{UserName: "u", Password: "p", AppKey: "k", ForceRefreshAccessToken: true}, `{"UserName":"u","Password":"p","AppKey":"k","ForceRefreshAccessToken":true}`},
		{irp.CancelPayload{Irn: "i", CnlRsn: "1", CnlRem: "Wrong entry"}, `{"Irn":"i","CnlRsn":"1","CnlRem":"Wrong entry"}`},
		{irp.Request{Data: "d"}, `{"Data":"d"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("Marshal(%T) = %s; want %s", c.v, b, c.want)
		}
	}
	var cd irp.CancelData
	must(t, json.Unmarshal([]byte(`{"Irn":"a5c1","CancelDate":"2019-12-05 14:26:00"}`), &cd))
	if cd.CancelDate == "" || cd.Irn == "" {
		t.Errorf("cancel answer read as %+v", cd)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
