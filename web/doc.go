// Package web will hold Warden's web console: one folder per screen with its
// handler, flat view model and templ view (a-h/templ), served by the control
// plane on port 8080. Views never touch the store; handlers build view
// models from the same services the API uses.
//
// Nothing lives here yet: the console arrives with a later issue.
package web
