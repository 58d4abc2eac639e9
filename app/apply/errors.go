package apply

import (
	"errors"
	"fmt"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
)

// errValidateOnly rolls back the transaction of a validation run.
var errValidateOnly = errors.New("validate only: roll back")

// rejected builds the 422 AdmissionRejected error that carries every
// diagnostic.
func rejected(diags []api.Diagnostic) *apierr.Error {
	msg := fmt.Sprintf("apply rejected: %d problem(s)", len(diags))
	if len(diags) > 0 {
		d := diags[0]
		msg = fmt.Sprintf("apply rejected: document %d (%s %s): %s: %s", d.Document, d.Kind, d.Name, d.Path, d.Message)
		if len(diags) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(diags)-1)
		}
	}
	return apierr.New(apierr.CodeAdmissionRejected, "%s", msg).WithDetails(map[string]any{"diagnostics": diags})
}

// forbidden builds the 403 Forbidden error of documents the principal may
// not apply (or validate): authorization is decided before admission, so
// these are not admission diagnostics. details.diagnostics lists each.
func forbidden(refused []api.Diagnostic) *apierr.Error {
	d := refused[0]
	msg := fmt.Sprintf("refused: document %d (%s %s): %s", d.Document, d.Kind, d.Name, d.Message)
	if len(refused) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(refused)-1)
	}
	return apierr.New(apierr.CodeForbidden, "%s", msg).WithDetails(map[string]any{"diagnostics": refused})
}
