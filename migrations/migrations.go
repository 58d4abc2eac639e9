package migrations

import "embed"

// FS holds the numbered migration files of every driver: sqlite/NNNN_name.up.sql
// and postgres/NNNN_name.up.sql, each with a matching .down.sql. The drivers
// apply the .up.sql files in order on Open and record them in
// schema_migrations.
//
//go:embed sqlite/*.sql postgres/*.sql
var FS embed.FS
