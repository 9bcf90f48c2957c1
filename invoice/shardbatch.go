package invoice

import (
	"context"
	"time"
)

// This file holds the Citus metadata read of strategy.shardGroups (Config.CitusBatch PerShard).

// learnShard records, once per seller, the shard that holds sellerID's
// rows (Citus metadata), for shardGroup. It reads only with
// strategy.shardGroups and a pool, outside the scheduler's lock, before
// the seller's first request is queued. A failed read is not recorded:
// the seller then batches alone, which is always single-shard, and the
// next request tries again.
func (c *Committer) learnShard(ctx context.Context, sellerID int64) {
	if !c.st.shardGroups || c.pool == nil {
		return
	}
	if _, ok := c.shards.Load(sellerID); ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return
	}
	defer conn.Release()
	var shard int64
	if err := conn.QueryRow(ctx, `SELECT get_shard_id_for_distribution_column('invoices', $1::bigint)`, sellerID).Scan(&shard); err != nil {
		return
	}
	c.shards.Store(sellerID, shard)
}

// shardGroup returns the batching group of seller sellerID
// (groupcommit.Config.Group): its shard's id, negated so that it never
// equals a seller id, or the seller's own id while its shard is unknown.
// Shard ids change only when a shard is split; a group learned before a
// split may then put two shards in one transaction, which Citus commits
// in two phases: slower, never wrong.
func (c *Committer) shardGroup(sellerID int64) int64 {
	if v, ok := c.shards.Load(sellerID); ok {
		return -v.(int64)
	}
	return sellerID
}
