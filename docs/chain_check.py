import hashlib, json, sys

def pct(s):
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    return "".join(chr(b) if b in safe else "%%%02X" % b for b in s.encode("utf-8"))

doc = json.load(open(sys.argv[1], encoding="utf-8"))
s = doc["summary"]
records = {}                                   # position -> (kind, row)
if s.get("opening"):                           # a series-year moved here mid-year
    o = s["opening"]
    records[o["position"]] = ("opening", {
        "serial": o["last_serial"], "number": o["last_number"], "invoice_date": o["last_invoice_date"],
        "issued_at": o["declared_at"], "cancelled_at": o["declared_at"],
        "cancel_reason": "declared by " + o["declared_by"], "buyer_gstin": "", "buyer_name": "",
        "place_of_supply": "", "original_number": "", "original_date": "", "items": [],
        "taxable": "0.00", "cgst": "0.00", "sgst": "0.00", "igst": "0.00", "total": "0.00",
        "hash": o["hash"]})
for row in doc["rows"]:
    records[row["issue_position"]] = ("issue", row)
    if row["cancel_position"]:
        records[row["cancel_position"]] = ("cancel", row)

prev = ""
for pos in range(1, s["chain_length"] + 1):
    kind, r = records[pos]                     # KeyError: a record is missing
    items = ";".join(",".join(pct(it[k]) for k in ("description", "hsn", "quantity", "unit_price",
                     "gst_rate", "taxable", "cgst", "sgst", "igst", "total")) for it in r["items"])
    addr = lambda a, keys: "" if a is None else ",".join(pct(a[k]) for k in keys)
    parts = ("line1", "line2", "city", "pin", "state")
    v2 = r.get("buyer_address") is not None or r.get("ship_to") is not None   # version 2
    fields = [("v", "2" if v2 else "1"), ("gstin", s["seller_gstin"]), ("fy", s["fy"]), ("series", s["series"]),
              ("doc_type", s["doc_type"]), ("position", str(pos)), ("kind", kind),
              ("serial", str(r["serial"])), ("number", r["number"]), ("invoice_date", r["invoice_date"]),
              ("issued_at", r["issued_at"]),
              ("recorded_at", r["issued_at"] if kind == "issue" else r["cancelled_at"]),
              ("buyer_gstin", r["buyer_gstin"]), ("buyer_name", r["buyer_name"])] + ([
              ("buyer_address", addr(r["buyer_address"], parts)),
              ("ship_to", addr(r["ship_to"], ("name",) + parts))] if v2 else []) + [
              ("place_of_supply", r["place_of_supply"]), ("original_number", r["original_number"]),
              ("original_date", r["original_date"]), ("items", items),
              ("taxable", r["taxable"]), ("cgst", r["cgst"]), ("sgst", r["sgst"]), ("igst", r["igst"]),
              ("total", r["total"]), ("reason", "" if kind == "issue" else r["cancel_reason"])]
    canonical = "&".join(n + "=" + pct(v) for n, v in fields) + "&prev=" + prev
    h = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    stored = r["cancel_hash"] if kind == "cancel" else r["hash"]
    if h != stored:
        sys.exit(f"position {pos} ({kind} {r['number']}): recomputed {h}, exported {stored}")
    prev = h

if prev != s["chain_head"]:
    sys.exit(f"last record {prev} differs from chain_head {s['chain_head']}")
print(f"{s['series']} {s['fy']}: {s['chain_length']} records recomputed, head {prev}")
