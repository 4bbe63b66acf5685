"""onedoor-door-acp: the Agent Client Protocol door (Zed, VS Code, JetBrains).

Light on purpose: importing the package imports nothing heavy.
"""
