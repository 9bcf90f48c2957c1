package series

import (
	"time"

	"github.com/invoiced/invoiced/gst"
)

// KindDeclared is the kind of the chain record that seals a settlement's
// declaration of one year: serials a lost device may have printed and
// never uploaded (docs/offline.md, docs/chain.md).
const KindDeclared = "declared"

// Declaration is what a settlement declares in one year of a lease: the
// serials First to Last (each spent: the device may have printed it, so
// it is never issued again) of series-year (Series, FY), recorded at chain
// position Position, with who declared them, when and why. DeclaredOn is
// the date GSTR-1 Table 13 reports them on: the IST date of DeclaredAt,
// or the year's first day when the declaration was made before it.
type Declaration struct {
	FY          gst.FY
	Position    int64
	First, Last int64
	// FirstNumber and LastNumber are the numbers the series' format
	// renders for First and Last.
	FirstNumber, LastNumber string
	LeaseID                 string
	DeviceID                string
	DeclaredAt              time.Time
	DeclaredOn              time.Time // civil date
	DeclaredBy              string
	Reason                  string
	Hash                    []byte // the chain record's stored hash (reads only)
}

// Count returns how many serials d declares.
func (d Declaration) Count() int64 { return d.Last - d.First + 1 }

// Seal returns the hash of the chain record that seals declaration d of
// series s, whose previous record's hash is prev (nil at position 1). The
// record's canonical form belongs to package document, which this package
// does not import; invoice.DeclarationSeal gives one for a seller.
type Seal func(s gst.Series, d Declaration, prev []byte) []byte
