package gateway

import (
	"net/url"
	"slices"
	"time"
)

func queryEscape(s string) string { return url.QueryEscape(s) }

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
