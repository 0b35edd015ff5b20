package tokenizer

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`    // "system", "user" or "assistant"
	Content string `json:"content"` // message text
}

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Encode tokenizes text. Special and added tokens that appear literally
	// in the text are matched as single tokens, as Hugging Face does.
	Encode(text string) []int
	// Decode turns ids back into text; special tokens are kept.
	Decode(ids []int) string
	// VocabSize is the number of ids, added tokens included.
	VocabSize() int
	// TokenID returns the id of a token string (special tokens included).
	TokenID(tok string) (int, bool)
	// EOSIDs are the ids that end generation.
	EOSIDs() []int
	// PadID is the id used to pad batches.
	PadID() int
	// ApplyChatTemplate renders messages with the model's chat template;
	// addGenerationPrompt appends the assistant header.
	ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error)
}
