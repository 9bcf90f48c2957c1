// Package readplans holds the tests that hold every read statement of the
// API, the console and the reports to a plan whose cost follows what the
// request asks for, whatever the planner's statistics: on tables filled
// by a burst and not yet analysed, and on one seller far larger than the
// rest after the prepared statements have gone generic. The plans are
// read with auto_explain (docs/threat-model.md, "Plans that do not
// depend on statistics"); the package has no code of its own.
package readplans
