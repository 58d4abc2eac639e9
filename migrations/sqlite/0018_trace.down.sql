DROP TABLE ocsf_events;
DROP TABLE span_rollups;
DROP TABLE span_resources;
DROP TABLE spans;
