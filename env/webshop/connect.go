package webshop

import (
	"context"
	"fmt"
	"time"

	"ragen/env/httpenv"
)

// BridgeHint says how to start the simulator bridge.
const BridgeHint = "start the simulator bridge: python3 scripts/envbridge.py --port 8120 " +
	"(it needs the upstream simulator package: webshop-minimal for webshop, alfworld + textworld and $ALFWORLD_DATA for alfworld; see scripts/envbridge.py), " +
	"or set bridge_url"

// Connect creates an env of envType on the bridge at url (the httpenv
// protocol) and returns its client; a bridge that does not answer is an
// error naming the URL and how to start it.
func Connect(ctx context.Context, envType, url string, timeoutS float64, envConfig map[string]any) (*httpenv.Client, error) {
	hc := httpenv.DefaultConfig()
	hc.URL, hc.EnvType, hc.EnvConfig = url, envType, envConfig
	hc.Timeout = time.Duration(timeoutS * float64(time.Second))
	c, err := httpenv.NewContext(ctx, hc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; %s", envType, err, BridgeHint)
	}
	return c, nil
}
