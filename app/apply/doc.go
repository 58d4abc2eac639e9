// Package apply is the apply pipeline, the same for every storage backend and
// run in SPEC.md's order:
//
//  1. authentication, role check and audit (done by the API layer, which
//     hands the pipeline an authenticated principal);
//  2. admission: defaulting, schema and name checks, policy CEL checks;
//  3. one store transaction for the whole multi-document body;
//  4. reconcile and 5. compile, inside that same transaction, so that
//     cross-reference, capability and policy-preflight diagnostics roll the
//     whole body back: nothing is ever partially applied;
//  6. hand-over of each new compiled manifest to its runtime adapter, after
//     commit.
//
// Validate runs the same steps and always rolls back; Diff compares a body
// with what is stored.
package apply
