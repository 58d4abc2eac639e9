// Package web is Warden's web console: server-rendered templ pages with
// htmx for partial updates, served by the control plane next to the /v1 API.
//
// One folder per screen (signup, signin, tenants, members, namespaces,
// apikeys, audit, …) holds its handler, flat view model and templ view; layout is the
// frame around them and static the embedded stylesheet and vendored htmx.
// Each screen declares the small Service interface it needs; views never
// touch the store. Console wires them: New(Deps) and Register(router).
//
// Pages carry no inline script or style, so SecurityHeaders can send a
// strict Content-Security-Policy. Every form carries the CSRF token as a
// hidden field and htmx sends it as a header (hx-headers on <body>); the
// CSRF check itself is app/oidc's middleware.
package web
