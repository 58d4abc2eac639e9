package namespaces

import "github.com/warden-dev/warden/web/layout"

// Model is the namespaces screen.
type Model struct {
	Page      layout.Page
	Rows      []Row
	CanCreate bool
	FormName  string
	NameError string
	Error     string
	Notice    string
}

// Row is one namespace in the table.
type Row struct {
	Name        string
	DisplayName string
	Created     string
}
