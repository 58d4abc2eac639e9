package resource

// DocumentError is a problem with one document of a multi-document body.
type DocumentError struct {
	// Document is the zero-based index of the document in the body.
	Document int
	Message  string
}

func (e *DocumentError) Error() string { return e.Message }

// DecodeDocuments splits a multi-document YAML (or JSON) body into objects.
// PLACEHOLDER: implemented by the resource-kinds work.
func DecodeDocuments(body []byte) ([]*Object, error) { return nil, nil }
