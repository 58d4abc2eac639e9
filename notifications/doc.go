// Package notifications reaches approvers where they are: it announces a
// paused tool call's Approval by e-mail (SMTP), Standard Webhooks and
// Slack-compatible chat, and takes decisions back from each of them.
//
// A NotificationChannel resource (in the approval's namespace, selected by
// environment and side-effect class) says who is told and how. Service.
// AnnounceTx enqueues one River job per channel and recipient in the store
// transaction that creates the Approval (jobs.Notifications.EnqueueTx);
// the job calls Service.Deliver, which sends and records every attempt in
// the store (store.Delivery). Decisions that come back (an e-mail link's
// page, a signed webhook, a Slack interaction) go through the gateway's
// Decide, the path of the API, with the channel named in the audit record.
package notifications
