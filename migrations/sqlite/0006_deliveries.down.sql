DROP TABLE notification_deliveries;
