"""Text encoders: one module per kind (kinds.py is their table), the shared base, the embedding cache and the
local Hugging Face hub cache."""
