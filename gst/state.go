package gst

// stateNames are the GST state and territory codes with their names, as
// the GST portal lists them.
var stateNames = map[string]string{
	"01": "Jammu and Kashmir", "02": "Himachal Pradesh", "03": "Punjab", "04": "Chandigarh",
	"05": "Uttarakhand", "06": "Haryana", "07": "Delhi", "08": "Rajasthan", "09": "Uttar Pradesh",
	"10": "Bihar", "11": "Sikkim", "12": "Arunachal Pradesh", "13": "Nagaland", "14": "Manipur",
	"15": "Mizoram", "16": "Tripura", "17": "Meghalaya", "18": "Assam", "19": "West Bengal",
	"20": "Jharkhand", "21": "Odisha", "22": "Chhattisgarh", "23": "Madhya Pradesh", "24": "Gujarat",
	"25": "Daman and Diu", "26": "Dadra and Nagar Haveli and Daman and Diu", "27": "Maharashtra",
	"28": "Andhra Pradesh (before division)", "29": "Karnataka", "30": "Goa", "31": "Lakshadweep",
	"32": "Kerala", "33": "Tamil Nadu", "34": "Puducherry", "35": "Andaman and Nicobar Islands",
	"36": "Telangana", "37": "Andhra Pradesh", "38": "Ladakh", "96": "Foreign Country", "97": "Other Territory",
}

// StateName returns the name of the GST state code ("29" → "Karnataka"),
// or "" for a code that names no state.
func StateName(code string) string { return stateNames[code] }

// StateLabel returns a state code as invoices write the place of supply:
// "29-Karnataka", or the code alone when it names no state.
func StateLabel(code string) string {
	if n := stateNames[code]; n != "" {
		return code + "-" + n
	}
	return code
}
