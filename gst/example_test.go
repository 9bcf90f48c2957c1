package gst_test

import (
	"fmt"
	"time"

	"github.com/invoiced/invoiced/gst"
)

func ExampleParseFormat() {
	f, err := gst.ParseFormat("ch1/{fy}/{seq:5}")
	if err != nil {
		panic(err)
	}
	n, _ := f.Render(2026, 42)
	fmt.Println(f, f.Capacity(), n)
	_, err = gst.ParseFormat("{SEQ:5}")
	fmt.Println(err)
	// Output:
	// CH1/{FY}/{SEQ:5} 99999 CH1/26-27/00042
	// format {SEQ:5} renders numbers starting with '0', such as 00001; a number must start with A-Z or 1-9
}

func ExampleFYAt() {
	before := time.Date(2026, 3, 31, 18, 29, 59, 0, time.UTC) // 23:59:59 IST
	after := time.Date(2026, 3, 31, 18, 30, 0, 0, time.UTC)   // 00:00 IST, 1 April
	fmt.Println(gst.FYAt(before), gst.FYAt(after), gst.FYAt(after).Short())
	// Output: 2025-26 2026-27 26-27
}

func ExampleParseGSTIN() {
	g, err := gst.ParseGSTIN("27aapfu0939f1zv")
	fmt.Println(g, g.StateCode(), err)
	_, err = gst.ParseGSTIN("01AABCE2207R1Z5")
	fmt.Println(err)
	// Output:
	// 27AAPFU0939F1ZV 27 <nil>
	// GSTIN 01AABCE2207R1Z5: check character should be V, not 5
}

func ExampleOverlap() {
	a, _ := gst.ParseFormat("A{SEQ}")
	b, _ := gst.ParseFormat("A1{SEQ}")
	c, _ := gst.ParseFormat("B{SEQ}")
	fmt.Println(gst.Overlap(a, b))
	fmt.Println(gst.Overlap(a, c))
	// Output:
	// A11 true
	//  false
}
