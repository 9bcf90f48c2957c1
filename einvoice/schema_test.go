package einvoice_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/internal/apperr"
)

// documented is the sample payload of the IRP's developer pages (the
// sandbox's "DOC/001", with its ship-to and dispatch parts), typed here: it
// must hold against the schema as written.
const documented = `{
 "Version": "1.1",
 "TranDtls": {"TaxSch": "GST", "SupTyp": "B2B", "RegRev": "Y", "IgstOnIntra": "N"},
 "DocDtls": {"Typ": "INV", "No": "DOC/001", "Dt": "18/08/2020"},
 "SellerDtls": {"Gstin": "37ARZPT4384Q1MT", "LglNm": "NIC company pvt ltd", "TrdNm": "NIC Industries",
  "Addr1": "5th block, kuvempu layout", "Addr2": "kuvempu layout", "Loc": "GANDHINAGAR", "Pin": 518001,
  "Stcd": "37", "Ph": "9000000000", "Em": "abc@gmail.com"},
 "BuyerDtls": {"Gstin": "29AWGPV7107B1Z1", "LglNm": "XYZ company pvt ltd", "TrdNm": "XYZ Industries", "Pos": "12",
  "Addr1": "7th block, kuvempu layout", "Addr2": "kuvempu layout", "Loc": "GANDHINAGAR", "Pin": 562160,
  "Stcd": "29", "Ph": "91111111111", "Em": "xyz@yahoo.com"},
 "DispDtls": {"Nm": "ABC company pvt ltd", "Addr1": "7th block, kuvempu layout", "Addr2": "kuvempu layout",
  "Loc": "Banagalore", "Pin": 562160, "Stcd": "29"},
 "ShipDtls": {"Gstin": "29AWGPV7107B1Z1", "LglNm": "CBE company pvt ltd", "TrdNm": "kuvempu layout",
  "Addr1": "7th block, kuvempu layout", "Addr2": "kuvempu layout", "Loc": "Banagalore", "Pin": 562160, "Stcd": "29"},
 "ItemList": [{"SlNo": "1", "PrdDesc": "Rice", "IsServc": "N", "HsnCd": "1001", "Barcde": "123456",
  "Qty": 100.345, "FreeQty": 10, "Unit": "BAG", "UnitPrice": 99.545, "TotAmt": 9988.84, "Discount": 10,
  "PreTaxVal": 1, "AssAmt": 9978.84, "GstRt": 12, "IgstAmt": 1197.46, "CgstAmt": 0, "SgstAmt": 0,
  "CesRt": 5, "CesAmt": 498.94, "CesNonAdvlAmt": 10, "StateCesRt": 12, "StateCesAmt": 1197.46,
  "StateCesNonAdvlAmt": 10, "OthChrg": 10, "TotItemVal": 12897.7, "OrdLineRef": "3256", "OrgCntry": "AG",
  "PrdSlNo": "12345", "BchDtls": {"Nm": "123456", "ExpDt": "01/08/2020", "WrDt": "01/09/2020"},
  "AttribDtls": [{"Nm": "Rice", "Val": "10000"}]}],
 "ValDtls": {"AssVal": 9978.84, "CgstVal": 0, "SgstVal": 0, "IgstVal": 1197.46, "CesVal": 508.94,
  "StCesVal": 1202.46, "Discount": 10, "OthChrg": 20, "RndOffAmt": 0.3, "TotInvVal": 12908, "TotInvValFc": 12897.7},
 "PayDtls": {"Nm": "ABCDE", "AccDet": "5697389713210", "Mode": "Cash", "FinInsBr": "SBIN11000", "PayTerm": "100",
  "PayInstr": "Gift", "CrTrn": "test", "DirDr": "test", "CrDay": 100, "PaidAmt": 10000, "PaymtDue": 5000},
 "RefDtls": {"InvRm": "TEST", "DocPerdDtls": {"InvStDt": "01/08/2020", "InvEndDt": "01/09/2020"},
  "PrecDocDtls": [{"InvNo": "DOC/002", "InvDt": "01/08/2020", "OthRefNo": "123456"}],
  "ContrDtls": [{"RecAdvRefr": "Doc/003", "RecAdvDt": "01/08/2020", "TendRefr": "Abc001", "ContrRefr": "Co123",
   "ExtRefr": "Yo456", "ProjRefr": "Doc-456", "PORefr": "Doc-789", "PORefDt": "01/08/2020"}]},
 "AddlDocDtls": [{"Url": "https://einv-apisandbox.nic.in", "Docs": "Test Doc", "Info": "Document Test"}],
 "ExpDtls": {"ShipBNo": "A-248", "ShipBDt": "01/08/2020", "Port": "INABG1", "RefClm": "N", "ForCur": "AED",
  "CntCode": "AE"},
 "EwbDtls": {"TransId": "12AWGPV7107B1Z1", "TransName": "XYZ EXIMS", "Distance": 100, "TransDocNo": "DOC01",
  "TransDocDt": "18/08/2020", "VehNo": "ka123456", "VehType": "R", "TransMode": "1"}
}`

func TestSchemaTakesTheDocumentedSample(t *testing.T) {
	t.Parallel()
	if err := einvoice.Validate([]byte(documented)); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaRefuses breaks a valid payload one way at a time and checks the
// schema names the place.
func TestSchemaRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, path string
		edit       func(m map[string]any)
	}{
		{"missing block", "", func(m map[string]any) { delete(m, "ValDtls") }},
		{"unknown field", "/SellerDtls", func(m map[string]any) { obj(m, "SellerDtls")["Address1"] = "x" }},
		{"doc type", "/DocDtls/Typ", func(m map[string]any) { obj(m, "DocDtls")["Typ"] = "BOS" }},
		{"doc number starts with 0", "/DocDtls/No", func(m map[string]any) { obj(m, "DocDtls")["No"] = "0INV1" }},
		{"doc number too long", "/DocDtls/No", func(m map[string]any) { obj(m, "DocDtls")["No"] = "ABCDEFGHIJ1234567" }},
		{"date shape", "/DocDtls/Dt", func(m map[string]any) { obj(m, "DocDtls")["Dt"] = "2026-11-29" }},
		{"PIN as a string", "/BuyerDtls/Pin", func(m map[string]any) { obj(m, "BuyerDtls")["Pin"] = "560095" }},
		{"PIN of five digits", "/BuyerDtls/Pin", func(m map[string]any) { obj(m, "BuyerDtls")["Pin"] = 56009 }},
		{"no items", "/ItemList", func(m map[string]any) { m["ItemList"] = []any{} }},
		{"amount as a string", "/ItemList/0/AssAmt", func(m map[string]any) { item(m)["AssAmt"] = "20.00" }},
		{"negative amount", "/ItemList/0/TotAmt", func(m map[string]any) { item(m)["TotAmt"] = -1 }},
		{"HSN letters", "/ItemList/0/HsnCd", func(m map[string]any) { item(m)["HsnCd"] = "09AB" }},
		{"round-off too large", "/ValDtls/RndOffAmt", func(m map[string]any) { obj(m, "ValDtls")["RndOffAmt"] = 100 }},
		{"supply type", "/TranDtls/SupTyp", func(m map[string]any) { obj(m, "TranDtls")["SupTyp"] = "B2C" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(einvoicetest.Payload(t, 1, einvoicetest.OtherStateGSTIN))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			b, _ = json.Marshal(m)
			err = einvoice.Validate(b)
			var se *einvoice.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, einvoice.ErrInvalidPayload) {
				t.Fatalf("Validate = %v; want a SchemaError", err)
			}
			for _, v := range se.Violations {
				if v.Path == c.path {
					if !strings.Contains(apperr.MessageOf(err), c.path+": ") {
						t.Errorf("message %q does not name %s", apperr.MessageOf(err), c.path)
					}
					return
				}
			}
			t.Errorf("violations %v; want one at %q", se.Violations, c.path)
		})
	}
}

func TestValidateRefusesNonJSON(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"", "{", `{} {}`, "[]"} {
		if err := einvoice.Validate([]byte(b)); !errors.Is(err, einvoice.ErrInvalidPayload) {
			t.Errorf("Validate(%q) = %v; want ErrInvalidPayload", b, err)
		}
	}
}

func obj(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }
func item(m map[string]any) map[string]any          { return m["ItemList"].([]any)[0].(map[string]any) }
