package cli

import "github.com/warden-dev/warden/app/compile"

// manifestURLs returns the service addresses compiled manifests name: every
// service on the host agents reach up's listeners at, with its configured
// port (the defaults where up has no flag for it), the control plane at
// the public URL, and the tool gateway at gatewayURL ("" when up runs
// none: manifests then keep the default gateway address).
func manifestURLs(scheme, listenHost, publicURL, gatewayURL string) compile.Options {
	o := compile.LocalOptions(scheme, clientHost(listenHost))
	o.ControlURL = publicURL
	if gatewayURL != "" {
		o.ToolGatewayURL = gatewayURL
	}
	return o
}
