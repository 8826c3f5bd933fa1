/**
 * The shell: the header with the connection state, the navigation, and the current page.
 */
export const App = () => (
  <div className="shell">
    <header className="top">
      <h1 className="brand">Skald</h1>
      <nav aria-label="Pages">
        <a href="/servers" aria-current="page">Servers</a>
      </nav>
    </header>
    <main id="main" tabIndex={-1}>
      <h2>Servers</h2>
    </main>
  </div>
)
