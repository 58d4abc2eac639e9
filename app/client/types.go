package client

// ListOptions selects and pages a list.
type ListOptions struct {
	// Selector is a label selector in Kubernetes syntax (see
	// resource.ParseSelector); sent as labelSelector.
	Selector string
	// FieldSelector filters on fields such as spec.provider=openai.
	FieldSelector string
	// Limit is the page size; 0 lets the server choose (100).
	Limit int
	// Continue is the opaque token of the previous page.
	Continue string
}
