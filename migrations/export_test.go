package migrations

// The Citus table lists (citus.go), for the external tests.
var (
	DistributedTables = distributedTables
	ReferenceTables   = referenceTables
	CoordinatorTables = coordinatorTables
)
