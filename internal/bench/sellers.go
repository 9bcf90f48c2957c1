package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/invoiced/invoiced/gst"
)

// SellerGSTINs returns the sellers the spawned servers issue for: the one
// GSTIN of c when c.Sellers is 0 or 1, else c.Sellers GSTINs in the state
// of c.GSTIN whose PANs are AAQCB0001H, AAQCB0002H, … (entity 1, Z, and a
// correct check character), so that every run of the same size reuses
// the same sellers. It fails when c.GSTIN has no valid state code.
func (c Config) SellerGSTINs() ([]string, error) {
	if c.Sellers <= 1 {
		return []string{c.GSTIN}, nil
	}
	g, err := gst.ParseGSTIN(c.GSTIN)
	if err != nil {
		return nil, fmt.Errorf("bench: --gstin: %w", err)
	}
	out := make([]string, c.Sellers)
	for i := range out {
		first14 := fmt.Sprintf("%sAAQCB%04dH1Z", g.StateCode(), i+1)
		check, err := gst.CheckChar(first14)
		if err != nil {
			return nil, err
		}
		out[i] = first14 + string(check)
	}
	return out, nil
}

// prepare migrates the database, makes sure each seller of gstins exists
// (creating it if missing) and creates an API key with scopes
// issue,read,manage for each; it returns the keys in the order of gstins.
func (iv invoiced) prepare(ctx context.Context, gstins []string) ([]string, error) {
	if _, err := iv.run(ctx, "migrate"); err != nil {
		return nil, err
	}
	var list string // `sellers list`, read once when a seller exists already
	keys := make([]string, len(gstins))
	for i, gstin := range gstins {
		name := "Bench Traders"
		if len(gstins) > 1 {
			name = fmt.Sprintf("Bench Traders %d", i+1)
		}
		if _, err := iv.run(ctx, "sellers", "add", "--gstin", gstin, "--name", name); err != nil {
			// Already there from an earlier run? Then carry on.
			if list == "" {
				var lerr error
				if list, lerr = iv.run(ctx, "sellers", "list"); lerr != nil {
					return nil, err
				}
			}
			if !strings.Contains(list, gstin) {
				return nil, err
			}
		}
		out, err := iv.run(ctx, "keys", "add", "--gstin", gstin, "--scopes", "issue,read,manage")
		if err != nil {
			return nil, err
		}
		fields := strings.Fields(strings.TrimSpace(out))
		if len(fields) == 0 {
			return nil, errors.New("keys add printed no key")
		}
		keys[i] = fields[len(fields)-1]
	}
	return keys, nil
}
