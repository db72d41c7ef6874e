"""Entry point of the gpupools component package (``PulumiPlugin.yaml`` beside this file).

``pulumi package add`` clones the repository at the requested tag and runs this folder with the
Python language host, which executes this file; ``gpupools.xlang.host`` then serves the components
(``pulumi.provider.experimental.component_provider_host``). The library is imported from this
checkout's ``components/`` folder, so the package is the code of the same tag.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "components"))

from gpupools.xlang import host

if __name__ == "__main__":
    host()
