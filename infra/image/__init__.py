"""The voicemesh container image: ``build`` makes it (``voicemesh image build``), ``lock`` pins its
Python dependencies (``voicemesh image lock``). The Containerfile, the Debian package list and the
lock file live beside them; docs/image.md says what is in the image and how it is proven."""
