package main

import (
	"context"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// storeURL returns the store of cfg: its [store] url, else SQLite in the
// user's state directory (store.DefaultURL).
func storeURL(cfg *config.Config) (string, error) {
	if cfg != nil && cfg.Store.URL != "" {
		return cfg.Store.URL, nil
	}
	return store.DefaultURL()
}

// openStore opens (and migrates) the store of cfg, for the commands that
// read or write it (store, audit, grant, approve) and for serve.
func openStore(ctx context.Context, cfg *config.Config) (*store.DB, error) {
	url, err := storeURL(cfg)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, url, store.Options{})
}
