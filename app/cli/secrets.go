package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store/backend"
)

// envMasterKeyNew holds the new master key when the current one comes from
// WARDEN_MASTER_KEY.
const envMasterKeyNew = "WARDEN_MASTER_KEY_NEW"

func newSecretsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Operate on Secret values at rest",
	}
	cmd.AddCommand(newRotateMasterKeyCmd(a))
	return cmd
}

func newRotateMasterKeyCmd(a *app) *cobra.Command {
	var dataDir, storeURL string
	cmd := &cobra.Command{
		Use:   "rotate-master-key",
		Short: "Re-encrypt every Secret of every tenant under a new master key",
		Long: `rotate-master-key re-wraps the data key of every sealed Secret value of every
tenant under a new master key, one transaction per tenant. Run it with Warden
stopped; it works directly on the store.

With the key file ($WARDEN_HOME/master.key, or <data-dir>/master.key) it
generates the new key, rotates, then installs it: the old key is kept as
master.key.previous (mode 0600) until you delete it.

With WARDEN_MASTER_KEY it takes the new key from WARDEN_MASTER_KEY_NEW
(base64 of 32 bytes); afterwards set WARDEN_MASTER_KEY to that value.

An interrupted rotation is finished by running the command again with the
same keys. Workload signing keys are not re-wrapped: Warden replaces a
signing key it can no longer open, and tokens of the old one stay valid
until they expire.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.rotateMasterKey(cmd.Context(), dataDir, storeURL)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the embedded store and key file (default $WARDEN_HOME)")
	cmd.Flags().StringVar(&storeURL, "store", "", "store URL (default sqlite://<data-dir>/warden.db)")
	return cmd
}

func (a *app) rotateMasterKey(ctx context.Context, dataDir, storeURL string) error {
	home, err := clientconfig.Home(a.env.LookupEnv)
	if err != nil {
		return err
	}
	if dataDir == "" {
		dataDir = home
	}
	if storeURL == "" {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return fmt.Errorf("data directory %s: %w", dataDir, err)
		}
		storeURL = "sqlite://" + filepath.Join(abs, "warden.db")
	}
	keyFile := filepath.Join(dataDir, secret.MasterKeyFileName)
	_, fromEnv := a.env.LookupEnv(secret.EnvMasterKey)
	if !fromEnv {
		if _, err := os.Stat(keyFile); err != nil {
			return fmt.Errorf("no master key to rotate: neither %s nor %s exists", secret.EnvMasterKey, keyFile)
		}
	}
	oldRaw, err := secret.LoadMasterKey(a.env.LookupEnv, keyFile)
	if err != nil {
		return err
	}
	var newText string
	if fromEnv {
		v, ok := a.env.LookupEnv(envMasterKeyNew)
		if !ok || v == "" {
			return usagef("%s is set, so give the new key in %s (generate one with: head -c 32 /dev/urandom | base64)", secret.EnvMasterKey, envMasterKeyNew)
		}
		newText = v
	} else if newText, err = secret.GenerateMasterKey(); err != nil {
		return err
	}
	newRaw, err := secret.LoadMasterKey(func(k string) (string, bool) {
		if k == secret.EnvMasterKey {
			return newText, true
		}
		return "", false
	}, "")
	if err != nil {
		return fmt.Errorf("new master key: %w", err)
	}
	oldK, err := secret.NewKeyring(oldRaw)
	if err != nil {
		return err
	}
	newK, err := secret.NewKeyring(newRaw)
	if err != nil {
		return err
	}
	if oldK.ID() == newK.ID() {
		return errors.New("the new master key is the current one: nothing to rotate")
	}

	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return fmt.Errorf("open store %s: %w", redactURL(storeURL), err)
	}
	defer st.Close()
	// The store must belong to the old key, or to the new one when this
	// reruns a rotation that was cut short.
	if err := secret.CheckMasterKey(ctx, st, oldK); err != nil {
		if !errors.Is(err, secret.ErrWrongMasterKey) || secret.CheckMasterKey(ctx, st, newK) != nil {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	res, err := secret.RotateSecrets(ctx, st, oldK, newK)
	if err != nil {
		return fmt.Errorf("rotate: %w (run the command again with the same keys to finish)", err)
	}
	if err := secret.RecordMasterKeyRotation(ctx, st, oldK, newK); err != nil {
		return fmt.Errorf("rotate: %w (run the command again with the same keys to finish)", err)
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "re-encrypted %d value(s) of %d secret(s) in %d tenant(s) under master key %s\n", res.Values, res.Secrets, res.Tenants, newK.ID())
	if fromEnv {
		fmt.Fprintf(w, "now set %s to the value of %s and start Warden\n", secret.EnvMasterKey, envMasterKeyNew)
		return nil
	}
	if err := installKeyFile(keyFile, newText); err != nil {
		return fmt.Errorf("the secrets are rotated but the new key file could not be installed: %w; "+
			"do not start Warden before %s holds the new key", err, keyFile)
	}
	fmt.Fprintf(w, "installed the new key in %s; the old one is in %s.previous: delete it once Warden runs\n", keyFile, keyFile)
	return nil
}

// installKeyFile keeps the current key as path.previous and writes the new
// one atomically, both 0600.
func installKeyFile(path, text string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".previous", old, 0o600); err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
