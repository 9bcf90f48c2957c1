package dbtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// startContainer starts PostgreSQL 15 in Docker for the life of the test
// binary (testcontainers' reaper removes it afterwards) and returns its URL.
func startContainer() (string, error) {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return "", errors.New("TEST_DATABASE_URL is unset and no Docker engine socket was found")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := postgres.Run(ctx, "postgres:15-alpine",
		postgres.WithDatabase("postgres"),
		postgres.WithUsername("postgres"),
		postgres.WithPassword("postgres"),
		// As scripts/pg's clusters: each `invoiced serve` a test starts
		// keeps its pool of --max-conns open, and tests run in parallel.
		testcontainers.WithCmdArgs("-c", "max_connections=300"),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").WithOccurrence(2).WithStartupTimeout(2*time.Minute)),
	)
	if err != nil {
		return "", fmt.Errorf("TEST_DATABASE_URL is unset and testcontainers could not start PostgreSQL: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}
