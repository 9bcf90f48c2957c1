// Package db is invoiced's one vocabulary for talking to PostgreSQL: the
// interfaces a store function asks of its caller (Querier to run
// statements, Beginner to start transactions), InTx to run a function in a
// transaction, and Classify, the one place that knows how PostgreSQL and
// pgx fail (SQLSTATE, severity, lost connections) and names the failure
// classes the rest of the code branches on.
//
// The SQLSTATEs invoiced raises itself (invoiced_require, migration 00002)
// are named here too, so each code is known in one place.
package db
