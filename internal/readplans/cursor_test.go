package readplans_test

import "encoding/base64"

func base64URL(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
