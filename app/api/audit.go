package api

import "github.com/warden-dev/warden/app/audit"

// AuditList is one page of audit records, the answer of GET /v1/audit.
type AuditList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Items      []audit.Record `json:"items"`
	// Next is the `after` value of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}
