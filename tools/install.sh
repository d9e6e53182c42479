#!/bin/sh
# linekeeper offline installer (shipped in the tar.gz as ./install.sh; the .deb runs it as postinst).
# Needs: root, Node.js of the major version in BUILDINFO, systemd. Uses no network.
#   ./install.sh             install or upgrade into /opt/linekeeper, create the linekeeper user, install
#                            the configuration templates into /etc/linekeeper (never overwriting), the unit
#   ./install.sh --enable    the same, then enable the service (start it yourself after `linekeeper doctor`)
set -eu
PREFIX=/opt/linekeeper
ETC=/etc/linekeeper
STATE=/var/lib/linekeeper
HERE=$(cd "$(dirname "$0")" && pwd)
FROM_DEB=no
ENABLE=no
for a in "$@"; do
  case "$a" in
    --from-deb) FROM_DEB=yes ;;
    --enable) ENABLE=yes ;;
    *) echo "install.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "install.sh: run as root (sudo ./install.sh)" >&2; exit 1; }

NODE=$(command -v node || true)
[ -n "$NODE" ] || { echo "install.sh: Node.js is not installed (install the nodejs package of the major version in BUILDINFO from your offline mirror)" >&2; exit 1; }
want=$(sed -n 's/.*"abi": "\([0-9]*\)".*/\1/p' "$HERE/BUILDINFO")
have=$("$NODE" -p process.versions.modules)
if [ "$want" != "$have" ]; then
  echo "install.sh: this package was built for Node ABI $want, this node ($("$NODE" -v)) is ABI $have: the native SQLite addon would not load. Use the package built for this Node major." >&2
  exit 1
fi
[ "$("$NODE" -p process.arch)" = "$(sed -n 's/.*"arch": "\([a-z0-9]*\)".*/\1/p' "$HERE/BUILDINFO")" ] || { echo "install.sh: package built for another CPU architecture" >&2; exit 1; }

if ! id linekeeper >/dev/null 2>&1; then
  useradd --system --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin --user-group linekeeper
  echo "install.sh: created system user linekeeper"
fi

if [ "$FROM_DEB" = no ]; then
  # software: replaced as a whole (the previous tree is kept beside it until the next upgrade)
  if [ -d "$PREFIX" ]; then rm -rf "$PREFIX.previous"; mv "$PREFIX" "$PREFIX.previous"; fi
  mkdir -p "$PREFIX"
  cp -a "$HERE/." "$PREFIX/"
  install -m 0644 "$PREFIX/systemd/linekeeper.service" /etc/systemd/system/linekeeper.service
fi
chown -R root:root "$PREFIX"
chmod -R go-w "$PREFIX"

# configuration: templates only where nothing is there yet (a site's configuration is never overwritten)
mkdir -p "$ETC"
if [ ! -e "$ETC/site.yaml" ]; then
  cp -a "$PREFIX/config/site.yaml" "$PREFIX/config/site.schema.json" "$ETC/"
  cp -a "$PREFIX/config/policy" "$ETC/policy"
  # data lives in the StateDirectory, not beside the configuration
  sed -i 's#^data_dir: .*#data_dir: /var/lib/linekeeper#' "$ETC/site.yaml"
  echo "install.sh: configuration templates installed in $ETC (edit site.yaml: connections, equipment, simulator.embedded: false)"
fi
chown -R root:linekeeper "$ETC"
chmod -R o-rwx "$ETC"
mkdir -p "$STATE"
chown linekeeper:linekeeper "$STATE"
chmod 0700 "$STATE"

ln -sf "$PREFIX/bin/linekeeper.js" /usr/local/bin/linekeeper
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  [ "$ENABLE" = yes ] && systemctl enable linekeeper.service
fi
echo "install.sh: installed linekeeper $(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$HERE/BUILDINFO") in $PREFIX"
echo "next: sudo -u linekeeper linekeeper doctor -c $ETC/site.yaml -d $STATE   then   systemctl enable --now linekeeper"
