package rundir

// Model is the model an agent talks to.
type Model struct {
	// Provider and ID name the model as the agent knows it.
	Provider string `json:"provider"`
	ID       string `json:"id"`
	// BaseURL overrides the provider's endpoint (the scripted model's
	// loopback address).
	BaseURL string `json:"base_url,omitempty"`
	// KeyEnv names the environment variable holding the provider key.
	KeyEnv string `json:"key_env,omitempty"`
	// Scripted marks pairbench's own scripted model: not an LLM.
	Scripted bool `json:"scripted,omitempty"`
	// Prices in USD per million tokens, for providers the agent cannot price.
	InputPrice  float64 `json:"input_price,omitempty"`
	OutputPrice float64 `json:"output_price,omitempty"`
}

// String returns provider/id.
func (m Model) String() string { return m.Provider + "/" + m.ID }
