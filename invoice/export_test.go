package invoice

// PendingOf returns how many requests wait in c's queues (for tests).
func PendingOf(c *Committer) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, g := range c.groups {
		n += len(g.pending)
	}
	return n
}
