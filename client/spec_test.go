package client

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// operations maps every operationId of api/openapi.yaml to the client
// method that calls it and the Go type its 200/201 JSON answer decodes
// into (nil for an answer that is not JSON).
var operations = map[string]struct {
	method string
	answer reflect.Type
}{
	"healthz":              {"Healthz", reflect.TypeFor[Status]()},
	"readyz":               {"Readyz", reflect.TypeFor[Status]()},
	"openapi":              {"OpenAPI", nil},
	"debugStats":           {"DebugStats", reflect.TypeFor[Stats]()},
	"metrics":              {"Metrics", nil},
	"createSeries":         {"CreateSeries", reflect.TypeFor[Series]()},
	"listSeries":           {"ListSeries", reflect.TypeFor[SeriesList]()},
	"issueInvoice":         {"IssueInvoice", reflect.TypeFor[Invoice]()},
	"listInvoices":         {"ListInvoices", reflect.TypeFor[InvoiceList]()},
	"getInvoice":           {"GetInvoice", reflect.TypeFor[Invoice]()},
	"findInvoices":         {"FindInvoices", reflect.TypeFor[InvoiceList]()},
	"cancelInvoice":        {"CancelInvoice", reflect.TypeFor[Invoice]()},
	"audit":                {"Audit", reflect.TypeFor[Audit]()},
	"gstr1DocIssue":        {"GSTR1DocIssue", reflect.TypeFor[DocIssue]()},
	"receipt":              {"Receipt", nil},
	"lockPeriod":           {"LockPeriod", reflect.TypeFor[PeriodLock]()},
	"listPeriods":          {"ListPeriods", reflect.TypeFor[Periods]()},
	"issueBatch":           {"IssueBatch", reflect.TypeFor[BatchResults]()},
	"createWebhook":        {"CreateWebhook", reflect.TypeFor[Webhook]()},
	"listWebhooks":         {"ListWebhooks", reflect.TypeFor[WebhookList]()},
	"deleteWebhook":        {"DeleteWebhook", nil},
	"listEvents":           {"ListEvents", reflect.TypeFor[EventList]()},
	"takeLease":            {"Lease", reflect.TypeFor[Lease]()},
	"endLease":             {"EndLease", reflect.TypeFor[Lease]()},
	"getLease":             {"GetLease", reflect.TypeFor[Lease]()},
	"resumeLease":          {"ResumeLease", reflect.TypeFor[Lease]()},
	"uploadDeviceInvoices": {"UploadDeviceInvoices", reflect.TypeFor[UploadResult]()},
	"uploadDeviceCancels":  {"UploadDeviceCancels", reflect.TypeFor[UploadResult]()},
}

// requests maps request-body schemas to the client's types.
var requests = map[string]reflect.Type{
	"SeriesRequest":   reflect.TypeFor[SeriesRequest](),
	"IssueRequest":    reflect.TypeFor[IssueRequest](),
	"CancelRequest":   reflect.TypeFor[CancelRequest](),
	"BatchRequest":    reflect.TypeFor[BatchRequest](),
	"WebhookRequest":  reflect.TypeFor[WebhookRequest](),
	"LeaseRequest":    reflect.TypeFor[LeaseRequest](),
	"EndLeaseRequest": reflect.TypeFor[EndLeaseRequest](),
	"DeviceInvoices":  reflect.TypeFor[DeviceInvoices](),
	"DeviceCancels":   reflect.TypeFor[DeviceCancels](),
}

// schemas maps every component schema to the client type it decodes
// into or encodes from; subsets are schemas the client decodes into a
// type that has every one of their properties (and more).
var (
	schemas = map[string]reflect.Type{
		"Audit": reflect.TypeFor[Audit](), "DocIssue": reflect.TypeFor[DocIssue](), "Status": reflect.TypeFor[Status](),
		"Error": reflect.TypeFor[errorBody](), "Decimal": reflect.TypeFor[string](), "Money": reflect.TypeFor[string](),
		"Date": reflect.TypeFor[string](), "DocType": reflect.TypeFor[string](),
		"SeriesRequest": reflect.TypeFor[SeriesRequest](), "Series": reflect.TypeFor[Series](),
		"SeriesYear": reflect.TypeFor[SeriesYear](), "SeriesList": reflect.TypeFor[SeriesList](),
		"IssueRequest": reflect.TypeFor[IssueRequest](), "Buyer": reflect.TypeFor[Buyer](),
		"Address": reflect.TypeFor[Address](), "ShipTo": reflect.TypeFor[ShipTo](),
		"Original": reflect.TypeFor[Original](), "ItemInput": reflect.TypeFor[ItemInput](),
		"Item": reflect.TypeFor[Item](), "Totals": reflect.TypeFor[Totals](), "Invoice": reflect.TypeFor[Invoice](),
		"InvoiceList": reflect.TypeFor[InvoiceList](), "CancelRequest": reflect.TypeFor[CancelRequest](),
		"PeriodLock":   reflect.TypeFor[PeriodLock](),
		"BatchRequest": reflect.TypeFor[BatchRequest](), "BatchItem": reflect.TypeFor[BatchItem](),
		"BatchResults": reflect.TypeFor[BatchResults](), "BatchResult": reflect.TypeFor[BatchResult](),
		"WebhookRequest": reflect.TypeFor[WebhookRequest](), "Webhook": reflect.TypeFor[Webhook](),
		"Event":        reflect.TypeFor[Event](),
		"LeaseRequest": reflect.TypeFor[LeaseRequest](), "Lease": reflect.TypeFor[Lease](), "Position": reflect.TypeFor[Position](),
		"EndLeaseRequest": reflect.TypeFor[EndLeaseRequest](), "DeviceInvoices": reflect.TypeFor[DeviceInvoices](),
		"DeviceInvoice": reflect.TypeFor[DeviceInvoice](), "UploadResult": reflect.TypeFor[UploadResult](),
		"DeviceCancels": reflect.TypeFor[DeviceCancels](), "DeviceCancel": reflect.TypeFor[DeviceCancel](),
		"YearSerial": reflect.TypeFor[YearSerial](), "EInvoice": reflect.TypeFor[EInvoice](),
	}
	subsets = map[string]reflect.Type{
		"CancelledInvoice": reflect.TypeFor[Invoice](), // what a cancel answers a key without read
	}
)

// TestEverySchemaHasAClientType compares every component schema with its
// client type, so that a schema added to the spec without a client type,
// or changed, fails.
func TestEverySchemaHasAClientType(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	for name, ref := range doc.Components.Schemas {
		if typ, ok := schemas[name]; ok {
			compare(t.Errorf, name, ref.Value, typ, slices.Contains([]string{"SeriesRequest", "IssueRequest", "CancelRequest", "Buyer", "Address", "ShipTo", "Original", "ItemInput", "BatchRequest", "BatchItem", "WebhookRequest"}, name))
			continue
		}
		typ, ok := subsets[name]
		if !ok {
			t.Errorf("schema %s has no client type", name)
			continue
		}
		fields := map[string]bool{}
		for i := range typ.NumField() {
			n, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields[n] = true
		}
		for prop := range ref.Value.Properties {
			if !fields[prop] {
				t.Errorf("schema %s: property %q has no field in %v", name, prop, typ)
			}
		}
	}
	for name := range schemas {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("client maps schema %s, which the spec no longer has", name)
		}
	}
}

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	b, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	return doc
}

// TestClientMatchesSpec fails when api/openapi.yaml and the client drift:
// an operation without a client method, a request or answer schema whose
// properties are not exactly the client type's JSON fields (recursively),
// or an optional request field the client would send when empty.
func TestClientMatchesSpec(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	ct := reflect.TypeFor[*Client]()
	var seen []string
	for path, item := range doc.Paths.Map() {
		for verb, op := range item.Operations() {
			seen = append(seen, op.OperationID)
			want, ok := operations[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s) has no client method", verb, path, op.OperationID)
				continue
			}
			if _, ok := ct.MethodByName(want.method); !ok {
				t.Errorf("%s: no method Client.%s", op.OperationID, want.method)
			}
			for _, status := range []string{"200", "201"} {
				r := op.Responses.Value(status)
				if r == nil {
					continue
				}
				mt := r.Value.Content.Get("application/json")
				if (mt == nil) != (want.answer == nil) {
					t.Errorf("%s %s: JSON answer %v, client decodes into %v", op.OperationID, status, mt != nil, want.answer)
					continue
				}
				if mt != nil {
					s := mt.Schema.Value
					if len(s.OneOf) > 0 { // cancel: the whole invoice or its four fields
						s = s.OneOf[0].Value
					}
					compare(t.Errorf, op.OperationID+" answer", s, want.answer, false)
				}
			}
			if op.RequestBody != nil {
				ref := op.RequestBody.Value.Content.Get("application/json").Schema.Ref
				name := ref[strings.LastIndex(ref, "/")+1:]
				typ, ok := requests[name]
				if !ok {
					t.Errorf("%s: request schema %q has no client type", op.OperationID, name)
					continue
				}
				compare(t.Errorf, name, doc.Components.Schemas[name].Value, typ, true)
			}
		}
	}
	for id := range operations {
		if !slices.Contains(seen, id) {
			t.Errorf("client maps operation %q, which the spec no longer has", id)
		}
	}
}

// compare checks that Go type typ has exactly the JSON fields schema s
// describes, recursing into objects and arrays. In a request, a property
// that is not required must be omitempty, so that the client never sends
// an empty value the server would refuse.
func compare(errorf func(format string, args ...any), where string, s *openapi3.Schema, typ reflect.Type, request bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case s.Type.Is("array"):
		if typ.Kind() != reflect.Slice {
			errorf("%s: spec has an array, client %v", where, typ)
			return
		}
		compare(errorf, where+"[]", s.Items.Value, typ.Elem(), request)
	case s.Type.Is("object") && len(s.Properties) == 0:
		if typ.Kind() != reflect.Map {
			errorf("%s: spec has a free-form object, client %v", where, typ)
		}
	case s.Type.Is("object"):
		if typ.Kind() != reflect.Struct {
			errorf("%s: spec has an object, client %v", where, typ)
			return
		}
		fields := map[string]reflect.StructField{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || name == "" {
				continue
			}
			fields[name] = f
			if _, ok := s.Properties[name]; !ok {
				errorf("%s: client field %s (%q) is not in the spec", where, f.Name, name)
				continue
			}
			if request && !slices.Contains(s.Required, name) && !strings.Contains(opts, "omitempty") {
				errorf("%s: optional property %q is not omitempty in the client", where, name)
			}
		}
		for name, p := range s.Properties {
			f, ok := fields[name]
			if !ok {
				errorf("%s: spec property %q has no client field", where, name)
				continue
			}
			compare(errorf, where+"."+name, p.Value, f.Type, request)
		}
	case s.Type.Is("string"):
		if typ.Kind() != reflect.String && typ != reflect.TypeFor[time.Time]() {
			errorf("%s: spec has a string, client %v", where, typ)
		}
		if typ == reflect.TypeFor[time.Time]() && s.Format != "date-time" {
			errorf("%s: client time.Time for a string of format %q", where, s.Format)
		}
	case s.Type.Is("integer"):
		if k := typ.Kind(); k != reflect.Int && k != reflect.Int64 {
			errorf("%s: spec has an integer, client %v", where, typ)
		}
	case s.Type.Is("boolean"):
		if typ.Kind() != reflect.Bool {
			errorf("%s: spec has a boolean, client %v", where, typ)
		}
	case len(s.AllOf) == 1:
		compare(errorf, where, s.AllOf[0].Value, typ, request)
	default:
		errorf("%s: schema the test cannot compare (%v)", where, s.Type)
	}
}

// TestCompareCatchesDrift proves the comparison fails on a renamed field,
// a missing one and a non-omitempty optional request field.
func TestCompareCatchesDrift(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	type renamed struct {
		Reason string `json:"why"`
	}
	type missing struct{}
	type sent struct {
		Code    string `json:"code"`
		DocType string `json:"doc_type"`
		Format  string `json:"format"`
		Shop    string `json:"shop"`
	}
	for name, c := range map[string]struct {
		schema string
		typ    reflect.Type
	}{
		"renamed": {"CancelRequest", reflect.TypeFor[renamed]()},
		"missing": {"CancelRequest", reflect.TypeFor[missing]()},
		"sent":    {"SeriesRequest", reflect.TypeFor[sent]()},
	} {
		failed := false
		compare(func(string, ...any) { failed = true }, name, doc.Components.Schemas[c.schema].Value, c.typ, true)
		if !failed {
			t.Errorf("%s: compare found no drift", name)
		}
	}
}
