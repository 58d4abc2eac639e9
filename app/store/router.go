package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/events"
)

// RouterTx records the model router's routing decisions inside a tenant
// transaction. Decisions are plain rows under the tenant's row-level
// security; they are not resources and never appear in the change log.
type RouterTx interface {
	// RouteDecisionInsert appends decisions, in order. Each decision's
	// Namespace, Route and Data are required; ID and Time are kept as
	// given (the router assigns both when it decides).
	RouteDecisionInsert(ctx context.Context, decisions []RouteDecision) error
	// RouteEventsInsert appends events, in order, as EventInsert would one
	// at a time, and returns them as stored (sequence, tenant and time
	// set). The router's recorder writes the events of a batch of calls
	// with it, in as few statements as the driver can manage.
	RouteEventsInsert(ctx context.Context, evs []events.Event) ([]events.Event, error)
	// RouteDecisionSweep deletes up to limit decisions made before
	// before, oldest first, and returns how many it deleted (fewer than
	// limit: no more are left).
	RouteDecisionSweep(ctx context.Context, before time.Time, limit int) (deleted int, err error)
}

// RouterReader reads the model router's routing decisions.
type RouterReader interface {
	// RouteDecisionList returns the decisions of one execution and route
	// in a namespace, oldest first, at most Limit of them (PageLimit).
	RouteDecisionList(ctx context.Context, params RouteDecisionListParams) ([]RouteDecision, error)
}

// RouteDecision is one routing decision of the model router: which
// candidates it considered for one model call, in order, and what became
// of each. Data is the decision as the router renders it in an
// explanation (app/router), stored as it was decided so that the
// explanation is exact rather than re-derived.
type RouteDecision struct {
	// ID identifies the decision (the router's request id).
	ID string
	// Namespace is the caller's namespace.
	Namespace string
	// Execution is the execution the call belongs to; empty for none.
	Execution string
	// Route is the name explained: the agent whose route was followed, or
	// the Model named by the caller.
	Route string
	// Agent is the calling agent, empty for a person or API key.
	Agent string
	// Time is when the router decided.
	Time time.Time
	// Data is the decision document (JSON).
	Data json.RawMessage
}

// RouteDecisionListParams selects decisions.
type RouteDecisionListParams struct {
	Namespace string
	Execution string
	Route     string
	Limit     int
}

// CheckRouteDecision refuses a decision without a namespace, route or
// data, or whose data is not JSON.
func CheckRouteDecision(d RouteDecision) error {
	switch {
	case d.Namespace == "" || d.Route == "" || d.ID == "":
		return fmt.Errorf("%w: a route decision needs an id, a namespace and a route", ErrInvalid)
	case !json.Valid(d.Data):
		return fmt.Errorf("%w: route decision %s: data is not JSON", ErrInvalid, d.ID)
	}
	return nil
}
