package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/store"
)

// OCSF classes Warden knows by name; others of OCSF 1.x are accepted with
// the base event's checks.
const (
	// OCSFClassAPIActivity is API Activity (category Application Activity).
	OCSFClassAPIActivity = 6003
	// ocsfCategoryApplication is the category of API Activity.
	ocsfCategoryApplication = 6
)

// maxOCSFEvents caps the events of one request.
const maxOCSFEvents = 1000

// ocsfEvent is the part of an OCSF event that is checked and indexed.
type ocsfEvent struct {
	ClassUID    *int64 `json:"class_uid"`
	CategoryUID *int64 `json:"category_uid"`
	ActivityID  *int64 `json:"activity_id"`
	TypeUID     *int64 `json:"type_uid"`
	SeverityID  *int64 `json:"severity_id"`
	StatusID    *int64 `json:"status_id"`
	Time        *int64 `json:"time"`
	Metadata    *struct {
		Version string `json:"version"`
		Product *struct {
			Name string `json:"name"`
		} `json:"product"`
	} `json:"metadata"`
	Actor *struct {
		AppName string `json:"app_name"`
		User    *struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"user"`
	} `json:"actor"`
	API *struct {
		Operation string `json:"operation"`
	} `json:"api"`
}

// parseOCSF parses a body of one OCSF event or an array of them into rows
// of namespace ns. Any invalid event fails the whole body: nothing is
// stored.
func parseOCSF(body []byte, ns string) ([]store.OCSFEvent, error) {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	switch {
	case len(body) > 0 && body[0] == '[':
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, fmt.Errorf("the body is not a JSON array of OCSF events: %w", err)
		}
	case len(body) > 0 && body[0] == '{':
		raws = []json.RawMessage{body}
	default:
		return nil, fmt.Errorf("the body must be an OCSF event (a JSON object) or an array of them")
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("the body holds no events")
	}
	if len(raws) > maxOCSFEvents {
		return nil, fmt.Errorf("the body holds %d events, more than the limit of %d", len(raws), maxOCSFEvents)
	}
	out := make([]store.OCSFEvent, 0, len(raws))
	var problems []string
	for i, raw := range raws {
		ev, err := checkOCSF(raw, ns)
		if err != nil {
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("event %d: %s", i, err))
			}
			continue
		}
		out = append(out, ev)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

// checkOCSF validates one event against OCSF 1.x's base event and, for
// API Activity, that class's required attributes.
func checkOCSF(raw json.RawMessage, ns string) (store.OCSFEvent, error) {
	var e ocsfEvent
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&e); err != nil {
		return store.OCSFEvent{}, fmt.Errorf("not an OCSF event: %w", err)
	}
	var missing []string
	for name, v := range map[string]*int64{"class_uid": e.ClassUID, "category_uid": e.CategoryUID, "activity_id": e.ActivityID,
		"severity_id": e.SeverityID, "time": e.Time, "type_uid": e.TypeUID} {
		if v == nil {
			missing = append(missing, name)
		}
	}
	if e.Metadata == nil || e.Metadata.Version == "" {
		missing = append(missing, "metadata.version")
	}
	if e.Metadata == nil || e.Metadata.Product == nil {
		missing = append(missing, "metadata.product")
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return store.OCSFEvent{}, fmt.Errorf("required attributes missing: %s", strings.Join(missing, ", "))
	}
	if !strings.HasPrefix(e.Metadata.Version, "1.") {
		return store.OCSFEvent{}, fmt.Errorf("metadata.version %q is not OCSF 1.x", e.Metadata.Version)
	}
	class, act := *e.ClassUID, *e.ActivityID
	if class <= 0 || class > math.MaxInt32 || act < 0 || act > 99 {
		return store.OCSFEvent{}, fmt.Errorf("class_uid %d or activity_id %d is out of range", class, act)
	}
	if *e.TypeUID != class*100+act {
		return store.OCSFEvent{}, fmt.Errorf("type_uid %d must be class_uid * 100 + activity_id = %d", *e.TypeUID, class*100+act)
	}
	if *e.CategoryUID != class/1000 {
		return store.OCSFEvent{}, fmt.Errorf("category_uid %d does not match class_uid %d", *e.CategoryUID, class)
	}
	if sev := *e.SeverityID; sev < 0 || (sev > 6 && sev != 99) {
		return store.OCSFEvent{}, fmt.Errorf("severity_id %d is not an OCSF severity (0-6, 99)", sev)
	}
	if *e.Time <= 0 {
		return store.OCSFEvent{}, fmt.Errorf("time must be a positive number of milliseconds since the epoch")
	}
	out := store.OCSFEvent{Namespace: ns, Time: *e.Time, ClassUID: int(class), ActivityID: int(act), SeverityID: int(*e.SeverityID), Data: raw}
	if e.StatusID != nil {
		out.StatusID = int(*e.StatusID)
	}
	if e.Actor != nil {
		switch {
		case e.Actor.User != nil && e.Actor.User.Name != "":
			out.Actor = e.Actor.User.Name
		case e.Actor.User != nil && e.Actor.User.UID != "":
			out.Actor = e.Actor.User.UID
		default:
			out.Actor = e.Actor.AppName
		}
	}
	if e.API != nil {
		out.Operation = e.API.Operation
	}
	if class == OCSFClassAPIActivity {
		switch {
		case *e.CategoryUID != ocsfCategoryApplication:
			return store.OCSFEvent{}, fmt.Errorf("API Activity has category_uid 6")
		case e.Actor == nil:
			return store.OCSFEvent{}, fmt.Errorf("API Activity requires actor")
		case e.API == nil || e.API.Operation == "":
			return store.OCSFEvent{}, fmt.Errorf("API Activity requires api.operation")
		case act != 0 && act != 99 && (act < 1 || act > 4):
			return store.OCSFEvent{}, fmt.Errorf("API Activity's activity_id is 0-4 or 99, not %d", act)
		}
	}
	return out, nil
}

// handleOCSF stores the OCSF events of one request, all or none.
func (s *Service) handleOCSF(w http.ResponseWriter, r *http.Request) {
	if mediaType(r) != contentJSON {
		writeHTTPError(w, contentJSON, apierr.New(apierr.CodeInvalidRequest, "Content-Type must be %s", contentJSON))
		return
	}
	p, err := s.cfg.Ingest.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden-trace"`)
		writeHTTPError(w, contentJSON, authError(err))
		return
	}
	src, err := s.source(r.Context(), p, r.Header.Get(NamespaceHeader))
	if err != nil {
		writeHTTPError(w, contentJSON, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes)+1)
	body, err := readBody(r, s.cfg.MaxRequestBytes)
	if err != nil {
		writeHTTPError(w, contentJSON, err)
		return
	}
	evs, err := parseOCSF(body, src.Namespace)
	if err != nil {
		writeHTTPError(w, contentJSON, apierr.New(apierr.CodeInvalidRequest, "%s; nothing was stored", err))
		return
	}
	if err := s.writer.Submit(r.Context(), src.Tenant, &store.SpanBatch{Events: evs}, true); err != nil {
		if e, ok := apierr.As(s.writeError(err)); ok && e.Code == apierr.CodeRateLimited {
			w.Header().Set("Retry-After", "1")
		}
		writeHTTPError(w, contentJSON, s.writeError(err))
		return
	}
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]int{"accepted": len(evs)})
}
