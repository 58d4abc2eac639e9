DROP TABLE IF EXISTS memory_items;
