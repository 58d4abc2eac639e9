DROP TABLE IF EXISTS route_decisions;
