// Package trace is Warden's trace service: it takes spans over OTLP/HTTP
// (port 4318, POST /v1/traces, with the OCSF ingest POST /v1/ocsf beside
// it) and OTLP/gRPC (port 4317), authenticated by workload token or API key
// (the tenant and namespace come from the credential), and Warden's own
// spans through an SDK exporter (Exporter); it stores them in the store's
// database (store.TraceStore) through a bounded queue whose writers batch
// many exports into one transaction (Writer); and it answers the query API
// on port 8086: whole traces, traces by selector, an execution's spans,
// and metrics in a small PromQL-like language over per-minute call
// aggregates (MetricQuery). docs/trace.md describes the service.
package trace
