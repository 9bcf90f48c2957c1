package reports

// AuditColumns returns the headers and JSON keys of the audit's columns,
// in order, for the tests that hold the exports to the table.
func AuditColumns() (headers, jsonKeys []string) {
	for _, c := range auditColumns {
		headers = append(headers, c.header)
		jsonKeys = append(jsonKeys, c.json)
	}
	return headers, jsonKeys
}
