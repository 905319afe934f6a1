// TODO: implemented by the core helper
