package tenants

import "errors"

// errNoIdentity means the store driver does not implement the identity
// methods (members) yet.
var errNoIdentity = errors.New("the store driver does not implement tenant members (store.MemberTx/MemberReader)")
