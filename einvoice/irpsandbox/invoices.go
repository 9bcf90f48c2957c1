package irpsandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/shopspring/decimal"
)

// The document calls: Generate IRN, the two lookups and Cancel.

// generate registers the payload plain for sess's GSTIN: checked against
// the INV-01 schema (2140, one error per violation) and a few of the IRP's
// business rules, then registered under its key once — a second time is
// 2150 with the first's IRN in InfoDtls.
func (s *Server) generate(_ *http.Request, sess *session, plain []byte) answer {
	if err := einvoice.Validate(plain); err != nil {
		a := answer{}
		if se, ok := err.(*einvoice.SchemaError); ok {
			for _, v := range se.Violations {
				a.details = append(a.details, einvoice.ErrorDetail{Code: "2140", Message: "Error while validating invoice: " + v.String()})
			}
		}
		if a.details == nil {
			return refuse("2140", "Error while validating invoice: "+err.Error())
		}
		return a
	}
	var p einvoice.Payload
	if err := json.Unmarshal(plain, &p); err != nil {
		return refuse("2140", "Error while validating invoice: "+err.Error())
	}
	if p.SellerDtls.Gstin != sess.gstin {
		return refuse("2143", "Invoice does not belongs to the user GSTIN")
	}
	if a, bad := businessRules(&p); bad {
		return a
	}
	key, err := einvoice.KeyOf(&p)
	if err != nil {
		return refuse("2140", "Error while validating invoice: "+err.Error())
	}
	key.Number = strings.ToUpper(key.Number)
	irn := key.IRN()

	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.docs[irn]; r != nil {
		r.Requests++
		desc, _ := json.Marshal(irp.DupDesc{AckNo: einvoice.NumberText(r.AckNo), AckDt: irp.FormatTime(r.AckDate), Irn: r.IRN})
		return answer{details: []einvoice.ErrorDetail{{Code: "2150", Message: "Duplicate IRN"}},
			info: []irp.InfoDetail{{InfCd: irp.InfoDuplicate, Desc: desc}}}
	}
	now := s.now().Truncate(time.Second)
	s.ackSeq++
	r := &registration{Registration: Registration{IRN: irn, GSTIN: key.GSTIN, DocType: string(key.Type), DocNo: key.Number,
		DocDate: p.DocDtls.Dt, AckNo: fmt.Sprintf("1%02d%012d", now.Year()%100, s.ackSeq), AckDate: now,
		Status: string(einvoice.IRNActive), Requests: 1}}
	if r.signedInvoice, err = s.signInvoice(plain, r); err != nil {
		return refuse("2147", "Unable to sign invoice, Pl try after some time")
	}
	if r.signedQR, err = s.signQR(&p, r); err != nil {
		return refuse("2147", "Unable to sign invoice, Pl try after some time")
	}
	s.docs[irn] = r
	return answer{data: r.irnData()}
}

// irnData is r as Generate IRN and the lookups answer it.
func (r *registration) irnData() irp.IRNData {
	return irp.IRNData{AckNo: einvoice.NumberText(r.AckNo), AckDt: irp.FormatTime(r.AckDate), Irn: r.IRN,
		SignedInvoice: r.signedInvoice, SignedQRCode: r.signedQR, Status: r.Status}
}

// businessRules checks some of the rules the IRP checks beyond the schema,
// with the codes public references give them: the tax split of an intra-
// or inter-state supply, and the totals adding up to a rupee. It returns
// the refusal and true when p breaks one.
func businessRules(p *einvoice.Payload) (answer, bool) {
	intra := p.BuyerDtls.Pos == p.SellerDtls.Stcd && p.TranDtls.IgstOnIntra != "Y"
	var ass, cgst, sgst, igst decimal.Decimal
	for _, it := range p.ItemList {
		c, sg, ig := it.CgstAmt.Decimal(), it.SgstAmt.Decimal(), it.IgstAmt.Decimal()
		switch {
		case intra && ig.IsPositive():
			return refuse("2172", fmt.Sprintf("For intra-state supply, IGST amount is not applicable, only CGST and SGST amounts are applicable (item %s)", it.SlNo)), true
		case !intra && (c.IsPositive() || sg.IsPositive()):
			return refuse("2174", fmt.Sprintf("For inter-state supply, CGST and SGST amounts are not applicable, only IGST amount is applicable (item %s)", it.SlNo)), true
		case !c.Equal(sg):
			return refuse("2227", fmt.Sprintf("CGST and SGST amounts are not equal (item %s)", it.SlNo)), true
		}
		ass, cgst, sgst, igst = ass.Add(it.AssAmt.Decimal()), cgst.Add(c), sgst.Add(sg), igst.Add(ig)
	}
	v := p.ValDtls
	one := decimal.NewFromInt(1)
	total := v.AssVal.Decimal().Add(v.CgstVal.Decimal()).Add(v.SgstVal.Decimal()).Add(v.IgstVal.Decimal()).
		Sub(v.Discount.Decimal()).Add(v.RndOffAmt.Decimal())
	for _, c := range []struct {
		code, name string
		got, want  decimal.Decimal
	}{
		{"2182", "AssVal", v.AssVal.Decimal(), ass}, {"2183", "CgstVal", v.CgstVal.Decimal(), cgst},
		{"2184", "SgstVal", v.SgstVal.Decimal(), sgst}, {"2185", "IgstVal", v.IgstVal.Decimal(), igst},
		{"2189", "TotInvVal", v.TotInvVal.Decimal(), total},
	} {
		if c.got.Sub(c.want).Abs().GreaterThan(one) {
			return refuse(c.code, fmt.Sprintf("Invalid %s: %s, the items and totals give %s", c.name, c.got, c.want)), true
		}
	}
	return answer{}, false
}

// signInvoice returns the signed invoice of r: the payload plain with the
// IRN and acknowledgement added, as a JWT signed with the signing key.
func (s *Server) signInvoice(plain []byte, r *registration) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	doc["AckNo"], doc["AckDt"], doc["Irn"] = json.Number(r.AckNo), irp.FormatTime(r.AckDate), r.IRN
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	return s.sign(b)
}

// signQR returns the signed QR code of p registered as r.
func (s *Server) signQR(p *einvoice.Payload, r *registration) (string, error) {
	main := p.ItemList[0]
	for _, it := range p.ItemList[1:] {
		if it.TotItemVal.Decimal().GreaterThan(main.TotItemVal.Decimal()) {
			main = it
		}
	}
	b, err := json.Marshal(einvoice.QRCode{SellerGstin: p.SellerDtls.Gstin, BuyerGstin: p.BuyerDtls.Gstin, DocNo: p.DocDtls.No,
		DocTyp: p.DocDtls.Typ, DocDt: p.DocDtls.Dt, TotInvVal: p.ValDtls.TotInvVal, ItemCnt: len(p.ItemList),
		MainHsnCode: main.HsnCd, Irn: r.IRN, IrnDt: irp.FormatTime(r.AckDate)})
	if err != nil {
		return "", err
	}
	return s.sign(b)
}

// sign returns data as the IRP signs content: a JWT, RS256, whose data
// claim is data as a string, issued by "NIC", naming the signing
// certificate (kid, x5t).
func (s *Server) sign(data []byte) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, irp.SignedClaims{Data: string(data), RegisteredClaims: jwt.RegisteredClaims{Issuer: "NIC"}})
	sum := thumbprint(s.cfg.Keys.SigningCert)
	t.Header["x5t"] = base64.RawURLEncoding.EncodeToString(sum)
	t.Header["kid"] = strings.ToUpper(hex.EncodeToString(sum))
	return t.SignedString(s.cfg.Keys.Signing)
}

// byDocument answers get-IRN-by-document-details for sess's GSTIN.
func (s *Server) byDocument(r *http.Request, sess *session, _ []byte) answer {
	q := r.URL.Query()
	date, err := einvoice.ParseDate(q.Get("docdate"))
	if err != nil {
		return refuse("2142", "Incomplete request parameters: docdate must be dd/mm/yyyy")
	}
	key := einvoice.DocKey{GSTIN: sess.gstin, Type: einvoice.DocType(q.Get("doctype")), Number: strings.ToUpper(q.Get("docnum")), Date: date}
	if !key.Type.Valid() || key.Number == "" {
		return refuse("2142", "Incomplete request parameters: doctype and docnum are required")
	}
	return s.details(sess.gstin, key.IRN(), "2154", "IRN details are not found")
}

// byIRN answers get-e-invoice-by-IRN for sess's GSTIN.
func (s *Server) byIRN(r *http.Request, sess *session, _ []byte) answer {
	return s.details(sess.gstin, r.PathValue("irn"), "2148", "Requested IRN data is not available")
}

// details answers a lookup of irn for gstin: the registration, or
// notFound, or 2283 once it is older than DetailsFor.
func (s *Server) details(gstin, irn, notFound, message string) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.docs[irn]
	switch {
	case r == nil || r.GSTIN != gstin:
		return refuse(notFound, message)
	case s.now().Sub(r.AckDate) > s.cfg.DetailsFor:
		return refuse("2283", "IRN details cannot be provided as it is generated more than 2 days ago")
	}
	return answer{data: r.irnData()}
}

// cancel cancels an IRN of sess's GSTIN: refused with 9999 when it is not
// active, 2270 more than 24 hours after registration, 2230 while an e-way
// bill on it is active.
func (s *Server) cancel(_ *http.Request, sess *session, plain []byte) answer {
	var c irp.CancelPayload
	if err := decodeStrict(plain, &c); err != nil {
		return refuse("2140", "Error while validating cancel request: "+err.Error())
	}
	rsn, err := strconv.Atoi(c.CnlRsn)
	if err != nil || !einvoice.CancelReason(rsn).Valid() || c.CnlRem == "" || len([]rune(c.CnlRem)) > einvoice.MaxCancelRemark {
		return refuse("2140", "Error while validating cancel request: CnlRsn must be 1 to 4 and CnlRem 1 to 100 characters")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.docs[c.Irn]
	now := s.now().Truncate(time.Second)
	switch {
	case r == nil:
		return refuse("2148", "Requested IRN data is not available")
	case r.GSTIN != sess.gstin:
		return refuse("2143", "Invoice does not belongs to the user GSTIN")
	case r.Status != string(einvoice.IRNActive):
		return refuse("9999", "Invoice is not active")
	case now.Sub(r.AckDate) > einvoice.CancelWindow:
		return refuse("2270", "The allowed cancellation time limit is crossed, you cannot cancel the IRN")
	case r.EWayBill:
		return refuse("2230", "This IRN cannot be cancelled because e-way bill has been generated")
	}
	r.Status, r.CancelledAt, r.CancelRsn = string(einvoice.IRNCancelled), &now, c.CnlRsn
	return answer{data: irp.CancelData{Irn: r.IRN, CancelDate: irp.FormatTime(now)}}
}
