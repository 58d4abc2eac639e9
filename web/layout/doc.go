// Package layout is the frame around every console screen (header with the
// product name, tenant switcher, navigation, main, footer, skip link) and
// the per-request plumbing the screens share: the signed-in principal, the
// CSRF token for forms and htmx, rendering, and turning service errors into
// text safe to show.
package layout
