// Package console is the web console for accountants at /console/: sign in
// with an API key, see each series, audit a series-year, cancel an invoice,
// read GSTR-1 Table 13 and verify the chains, without curl. It renders
// HTML on the server (html/template, embedded assets, no script), keeps
// sessions in PostgreSQL (store.go) and reuses the api package's key
// checks and the reports package's reports. docs/console.md describes it.
package console
