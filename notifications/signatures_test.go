package notifications

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The example of the Standard Webhooks specification.
func TestSignWebhookSpecExample(t *testing.T) {
	t.Parallel()
	sig, err := SignWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	now := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	good, _ := SignWebhook(secret, "msg_1", now, body)
	h := func(id string, ts time.Time, sig string) http.Header {
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(ts.Unix(), 10)}, "Webhook-Signature": {sig}}
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"valid", h("msg_1", now, good), body, nil},
		{"one of several signatures", h("msg_1", now, "v1,bm90IGl0 "+good), body, nil},
		{"tampered body", h("msg_1", now, good), []byte(`{"test": 1}`), ErrBadSignature},
		{"other id", h("msg_2", now, good), body, ErrBadSignature},
		{"too old", h("msg_1", now.Add(-6*time.Minute), good), body, ErrStale},
		{"from the future", h("msg_1", now.Add(6*time.Minute), good), body, ErrStale},
		{"missing headers", http.Header{}, body, ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := VerifyWebhook(secret, tc.header, tc.body, now)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}

// The example of Slack's request-signing documentation.
func TestSignSlackDocsExample(t *testing.T) {
	t.Parallel()
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	ts := time.Unix(1531420618, 0)
	sig := SignSlack("8f742231b10e8888abcd99yyyzzz85a5", ts, []byte(body))
	require.Equal(t, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", sig)
	h := http.Header{HeaderSlackSignature: {sig}, HeaderSlackTimestamp: {"1531420618"}}
	require.NoError(t, VerifySlack("8f742231b10e8888abcd99yyyzzz85a5", h, []byte(body), ts.Add(time.Minute)))
	require.ErrorIs(t, VerifySlack("8f742231b10e8888abcd99yyyzzz85a5", h, []byte(body), ts.Add(6*time.Minute)), ErrStale)
	require.ErrorIs(t, VerifySlack("other", h, []byte(body), ts), ErrBadSignature)
}

func TestLink(t *testing.T) {
	t.Parallel()
	key := DeriveLinkKey([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_700_000_000, 0)
	c := LinkClaims{Tenant: "acme", Namespace: "default", Approval: "ap-1", Recipient: "a@example.com", Expires: now.Add(time.Hour).Unix()}
	tok := SignLink(key, c)
	got, err := ParseLink(key, tok, now)
	require.NoError(t, err)
	require.Equal(t, c, got)

	_, err = ParseLink(key, tok, now.Add(time.Hour))
	require.ErrorIs(t, err, ErrLinkExpired)
	_, err = ParseLink(DeriveLinkKey([]byte("another master key, 32 bytes ...")), tok, now)
	require.ErrorIs(t, err, ErrBadLink)
	// Another recipient's claims with this signature.
	body, sig, _ := strings.Cut(tok, ".")
	other, _, _ := strings.Cut(SignLink(key, LinkClaims{Tenant: "acme", Namespace: "default", Approval: "ap-1", Recipient: "m@example.com", Expires: c.Expires}), ".")
	require.NotEqual(t, body, other)
	_, err = ParseLink(key, other+"."+sig, now)
	require.ErrorIs(t, err, ErrBadLink)
}

func TestParseSlackInteraction(t *testing.T) {
	t.Parallel()
	form := func(p string) []byte { return []byte("payload=" + url.QueryEscape(p)) }
	_, d, ns, ap, err := ParseSlackInteraction(form(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"deny","value":"team-a/ap-9"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"deny", "team-a", "ap-9"}, []string{d, ns, ap})
	for _, bad := range []string{
		`{"type":"view_submission"}`,
		`{"type":"block_actions","actions":[{"action_id":"open","value":"a/b"}]}`,
		`{"type":"block_actions","actions":[{"action_id":"approve","value":"no-slash"}]}`,
		`{"type":"block_actions","actions":[]}`,
		`not json`,
	} {
		_, _, _, _, err := ParseSlackInteraction(form(bad))
		require.Error(t, err, bad)
	}
}

func FuzzParseLink(f *testing.F) {
	key := DeriveLinkKey([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_700_000_000, 0)
	f.Add(SignLink(key, LinkClaims{Tenant: "t", Namespace: "n", Approval: "a", Recipient: "r@x", Expires: now.Add(time.Hour).Unix()}))
	f.Add("e30.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := ParseLink(key, tok, now)
		if err == nil && (c.Tenant == "" || c.Recipient == "" || SignLink(key, c) == "") {
			t.Fatalf("accepted incomplete claims %+v", c)
		}
	})
}

func FuzzVerifyWebhook(f *testing.F) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	f.Add("msg_1", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", []byte(`{"test": 2432232314}`))
	f.Add("", "x", "v1,", []byte{})
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
		if VerifyWebhook(secret, h, body, time.Unix(1614265330, 0)) == nil {
			sec, _ := strconv.ParseInt(ts, 10, 64)
			want, _ := SignWebhook(secret, id, time.Unix(sec, 0), body)
			if !strings.Contains(sig, want) {
				t.Fatalf("accepted a signature that is not the body's")
			}
		}
	})
}

func FuzzParseSlackInteraction(f *testing.F) {
	f.Add([]byte("payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"approve","value":"a/b"}]}`)))
	f.Add([]byte("payload=%7B"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, d, ns, ap, err := ParseSlackInteraction(body)
		if err == nil && (ns == "" || ap == "" || (d != "approve" && d != "deny")) {
			t.Fatalf("accepted %q: %q %q %q", body, d, ns, ap)
		}
	})
}
