//! A fake editor speaking LSP framing to the real binary (being written).
