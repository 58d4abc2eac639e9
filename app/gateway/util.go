package gateway

import "time"

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
