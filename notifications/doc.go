// Package notifications will hold the senders that reach people outside the
// console: e-mail, webhooks and chat, used first to ask approvers for a
// decision on a paused tool call.
//
// Nothing lives here yet: senders arrive with the approval work of a later
// issue.
package notifications
