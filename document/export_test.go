package document

// FastIssueHash is IssueHash with the draft's precomputed content part.
func FastIssueHash(gstin string, inv *Invoice, position int64, prev []byte, d *Draft) []byte {
	s, err := d.Seal()
	if err != nil {
		panic(err)
	}
	return IssueHash(gstin, inv, position, prev, s.Content)
}
