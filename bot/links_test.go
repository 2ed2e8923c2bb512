package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/bot"
)

func TestTheLinkKeyFollowsTheWebhookSecret(t *testing.T) {
	t.Parallel()
	a := bot.LinkKey([]byte("secret-1"))
	assert.Len(t, a, 32)
	assert.Equal(t, a, bot.LinkKey([]byte("secret-1")), "the same secret, the same key: links survive a restart")
	assert.NotEqual(t, a, bot.LinkKey([]byte("secret-2")), "a rotated secret revokes every link")
	assert.NotEqual(t, []byte("secret-1"), a, "the key is not the secret itself")
}
