package prloop

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// A Config crosses processes as JSON (a Temporal workflow's input, which
// Decide reads inside the workflow): its review bot, an interface, travels
// by its Name and is made again from a registry. prloop stays
// forge-neutral: the forge's package knows its bot, and whoever picks the
// bot registers it (the cli registers Copilot).
var (
	botsMu sync.RWMutex
	bots   = map[string]func() ReviewBot{}
)

// RegisterBot lets a Config naming the bot name be read back: newBot
// makes the bot. It panics when newBot's bot is not called name, a
// programming error. Registering a name again replaces its maker.
func RegisterBot(name string, newBot func() ReviewBot) {
	if name == "" || newBot == nil || newBot() == nil || newBot().Name() != name {
		panic(fmt.Sprintf("prloop.RegisterBot(%q): the maker must make a bot of that name", name))
	}
	botsMu.Lock()
	defer botsMu.Unlock()
	bots[name] = newBot
}

func registeredBot(name string) (func() ReviewBot, bool) {
	botsMu.RLock()
	defer botsMu.RUnlock()
	mk, ok := bots[name]
	return mk, ok
}

func registeredBots() []string {
	botsMu.RLock()
	defer botsMu.RUnlock()
	out := make([]string, 0, len(bots))
	for n := range bots {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// configJSON is Config on the wire: every field as it is, the bot by its
// name ("" for none). The outer Bot hides the embedded one.
type configJSON struct {
	*plainConfig
	Bot string `json:"Bot"`
}

type plainConfig Config

// MarshalJSON writes the bot as its name. A bot that its name would not
// make again (unregistered, or configured apart from its defaults) is an
// error: read back, it would be another bot.
func (c Config) MarshalJSON() ([]byte, error) {
	w := configJSON{plainConfig: (*plainConfig)(&c)}
	if c.Bot != nil {
		name := c.Bot.Name()
		mk, ok := registeredBot(name)
		if !ok {
			return nil, fmt.Errorf("config: review bot %q is not registered (prloop.RegisterBot), so it could not be read back", name)
		}
		if !reflect.DeepEqual(mk(), c.Bot) {
			return nil, fmt.Errorf("config: review bot %q differs from the one its name makes, so it cannot travel by name", name)
		}
		w.Bot = name
	}
	return json.Marshal(w)
}

// UnmarshalJSON makes the bot again from its name; a name no one
// registered is an error, never a run without its bot.
func (c *Config) UnmarshalJSON(b []byte) error {
	w := configJSON{plainConfig: (*plainConfig)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.Bot = nil
	if w.Bot == "" {
		return nil
	}
	mk, ok := registeredBot(w.Bot)
	if !ok {
		return fmt.Errorf("config: unknown review bot %q (registered: %v)", w.Bot, registeredBots())
	}
	c.Bot = mk()
	return nil
}
